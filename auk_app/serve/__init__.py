"""AuK edits on Ray Serve replicas: the deployment (``deployment``, runs inside Ray), the app's
HTTP client (``client``, no Ray import), the plan they exchange (``wire``) and a local launcher
for tests and the bench (``launch``). See docs/serve.md."""
