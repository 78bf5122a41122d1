"""Running the workflow: profiles, submission groups, the software route, status, notices and timings."""
