from judge_metrics.demo import launch_metric_demo

launch_metric_demo("trajectory_match")
