from gpu_migration_analyzer import AWSGPUMigrationAnalyzer

analyzer = AWSGPUMigrationAnalyzer()
analyzer.run_workload_set("cost_optimization_focus")
