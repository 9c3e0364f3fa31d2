# Compare memory usage across precision formats
precisions = ["fp32", "fp16", "bf16", "fp8", "int8"]
for precision in precisions:
    memory_gb = analyzer.get_model_size_gb(ModelSize.MEDIUM, precision)
    print(f"{precision.upper()}: {memory_gb}GB")

# Output for 35B parameter model:
# FP32: 140GB    # Highest accuracy, largest memory
# FP16: 70GB     # Balanced accuracy/memory
# BF16: 70GB     # Better numerical stability
# FP8: 35GB      # Experimental, inference optimization
# INT8: 35GB     # Quantized, lowest memory
