"""The scheduler: scheduling queue, cache of assumed pods, the scheduling and binding cycles
(``scheduler``), and the loop that drives it on a fake clock (``runner``)."""
