"""The gpufleet command line: the only package that prints."""
