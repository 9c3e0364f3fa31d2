from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, ModelSize, WorkloadType

analyzer = AWSGPUMigrationAnalyzer()
report = analyzer.generate_migration_report(
    current_instance="P5",
    current_gpu_count=2,
    workload_type=WorkloadType.TRAINING,
    model_size=ModelSize.LARGE,
    monthly_hours=500,
    use_spot=True,
)
print(report)
