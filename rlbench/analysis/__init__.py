"""From the per-trial files to answers: tables, per-trial and per-configuration figures, statistics, advice."""
