"""The scheduler (``scheduler.Scheduler``), composed of parts over one shared state: the pod's
scheduling cycle, the PodGroup and CompositePodGroup cycles, the binding cycle, the failure
handler and the informer handlers; the scheduling queue and the cache of assumed pods."""
