"""Layer 3, what every test family shares: the posterior's summaries (:mod:`.posterior_summary`), the frequentist
baselines the paper compares with (:mod:`.baselines`), the figures' common parts (:mod:`.figures`) and the HTML
report's (:mod:`.report_html`, with the two number rules)."""
