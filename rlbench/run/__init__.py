"""Running a sweep: orchestration, one trial's lifecycle seen from outside, resume, env ceilings, cluster probe."""
