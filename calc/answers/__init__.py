"""The answers: a start's report, the verdict on a log, "your start", the watch and the prefetch plan."""
