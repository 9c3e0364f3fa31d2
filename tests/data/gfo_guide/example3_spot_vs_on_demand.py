# Compare costs for the same workload
instances = ["P5", "G6e", "P4d"]
for instance in instances:
    print(f"\n=== {instance} Cost Comparison ===")

    # On-demand pricing
    report_ondemand = analyzer.generate_migration_report(
        current_instance=instance,
        current_gpu_count=2,
        workload_type=WorkloadType.TRAINING,
        model_size=ModelSize.LARGE,
        use_spot=False,
    )

    # Spot pricing
    report_spot = analyzer.generate_migration_report(
        current_instance=instance,
        current_gpu_count=2,
        workload_type=WorkloadType.TRAINING,
        model_size=ModelSize.LARGE,
        use_spot=True,
    )
