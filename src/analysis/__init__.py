"""Reading outcomes: why a pod is where it is (:mod:`.explain`), two configurations side by side
(:mod:`.compare`), plots of replays and sweeps (:mod:`.plots`), and the self-contained HTML page of a
run (:mod:`.html_page`). Answers are plain data; ``kubesched.cli`` prints them."""
