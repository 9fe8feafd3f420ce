from judge_metrics.demo import launch_metric_demo

launch_metric_demo("l3score")
