scenarios = [
    {"instance": "G4dn", "gpus": 4, "workload": WorkloadType.INFERENCE, "model": ModelSize.SMALL},
    {"instance": "P4d", "gpus": 8, "workload": WorkloadType.TRAINING, "model": ModelSize.LARGE},
    {"instance": "G6e", "gpus": 2, "workload": WorkloadType.FINE_TUNING, "model": ModelSize.MEDIUM},
]

for scenario in scenarios:
    print(f"\n=== {scenario['instance']} Analysis ===")
    report = analyzer.generate_migration_report(
        current_instance=scenario["instance"],
        current_gpu_count=scenario["gpus"],
        workload_type=scenario["workload"],
        model_size=scenario["model"],
        monthly_hours=720,
        use_spot=True,
    )
    print(report)
