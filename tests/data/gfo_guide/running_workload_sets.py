# Cost optimization focus
analyzer.run_workload_set("cost_optimization_focus")

# Performance upgrade focus
analyzer.run_workload_set("performance_focus")

# Academic research scenarios
analyzer.run_workload_set("research_academic")
