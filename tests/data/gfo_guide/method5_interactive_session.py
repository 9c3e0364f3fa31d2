from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, ModelSize, WorkloadType

# Initialize analyzer
analyzer = AWSGPUMigrationAnalyzer()

# List available workloads
analyzer.list_available_workloads()

# Run specific workload
analyzer.run_workload_by_id("training_large_p4d")

# Custom analysis with different precision
report = analyzer.generate_migration_report(
    current_instance="P5",
    current_gpu_count=1,
    workload_type=WorkloadType.INFERENCE,
    model_size=ModelSize.MEDIUM,
    precision="int8",  # Uses 35GB instead of 70GB for FP16
)
print(report)
