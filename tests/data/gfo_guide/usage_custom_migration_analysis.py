from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, ModelSize, WorkloadType

analyzer = AWSGPUMigrationAnalyzer()

# Analyze training workload migration
report = analyzer.generate_migration_report(
    current_instance="P4d",
    current_gpu_count=8,
    workload_type=WorkloadType.TRAINING,
    model_size=ModelSize.LARGE,
    monthly_hours=500,
    use_spot=True,  # 60-70% cost savings
)
print(report)
