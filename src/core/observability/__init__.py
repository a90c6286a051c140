"""What the scheduler tells the outside: Prometheus metrics, /healthz and /readyz, structured
logs and Kubernetes Events."""
