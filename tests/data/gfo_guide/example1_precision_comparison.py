analyzer = AWSGPUMigrationAnalyzer()

# Compare memory usage across precision formats for Medium model (35B params)
precisions = ["fp32", "fp16", "bf16", "fp8", "int8"]
for precision in precisions:
    memory_gb = analyzer.get_model_size_gb(ModelSize.MEDIUM, precision)
    print(f"{precision.upper()}: {memory_gb}GB")

# Output:
# FP32: 140GB
# FP16: 70GB
# BF16: 70GB
# FP8: 35GB
# INT8: 35GB
