"""The passes, pure: the repaired view, the request pass and the restore of dropped calls."""
