"""What is matched, in the clear on each party's side: normalization, field encoders and their
agreement, the rule model (DNF of a boolean or Fellegi-Sunter rule), comparison levels and the
Fellegi-Sunter model over them, the person preset, the rules file, matching keys, blocking passes,
EM estimation of m and u, the cost plan, one-to-one choice, and linkage quality."""
