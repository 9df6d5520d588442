"""Background work that runs beside the HTTP server: report generation and webhook delivery."""
