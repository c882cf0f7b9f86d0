"""The reports a casino reads, from the central database: per table, dealer and heat (hands
and decisions per hour, side-bet take-up, alerts, manual entries), the tournament's
economics (fees, pools, prizes and claims), and the distribution of simulated scores.

Reading (`reading`, `economics.read_economics`) is apart from the counting (`play`,
`economics`, `score_distribution`), which is pure; `render` writes text, JSON and CSV.
"""
