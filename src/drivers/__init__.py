"""The ways of running the scheduler: the wiring of scheduler, controllers, cluster, clock and
informers (:mod:`.harness`), a simulation on the embedded cluster and a fake clock
(:mod:`.simulation`), the run-to-quiescence loop (:mod:`.quiescence`), the daemon
(:mod:`.daemon`), and garbage collection for batch runs (:mod:`.batch_gc`)."""
