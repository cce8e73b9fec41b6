"""Running a method: the one runner and door to results (``runner``), its computing path, its stored results,
a run's announcements (from its first second) and the live queue's optional timing lines."""
