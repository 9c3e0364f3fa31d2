from gpu_migration_analyzer import AWSGPUMigrationAnalyzer

analyzer = AWSGPUMigrationAnalyzer()
analyzer.run_workload_by_id("inference_small_p5")
