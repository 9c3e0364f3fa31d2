cd gpu-migration-analyzer

# Run basic demonstration scenarios
python3 gpu_migration_analyzer.py

# Run cost-focused scenarios
python3 -c "
from gpu_migration_analyzer import AWSGPUMigrationAnalyzer
analyzer = AWSGPUMigrationAnalyzer()
analyzer.run_workload_set('cost_optimization_focus')
"

# Run performance-focused scenarios  
python3 -c "
from gpu_migration_analyzer import AWSGPUMigrationAnalyzer
analyzer = AWSGPUMigrationAnalyzer()
analyzer.run_workload_set('performance_focus')
"
