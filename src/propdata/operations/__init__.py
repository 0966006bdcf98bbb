"""What an operator watches: GET /metrics, and every request's metrics and log line."""
