"""What every controller is built from: the base class with its informer handlers and
workers (``base``), and client-go's rate-limited work queue (``workqueue``)."""
