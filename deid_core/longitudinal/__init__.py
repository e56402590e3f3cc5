"""Longitudinal (two-level) de-identification: one person, many events.

Level 1 holds a person's fixed values (sex, birth year), level 2 their events
(claims, visits, prescriptions). Every measure here counts distinct persons,
not rows (El Emam & Arbuckle, *Anonymizing Health Data*, 2014, ch. 4–6, 10;
El Emam et al., "De-identification methods for open health data: the case of
the Heritage Health Prize claims dataset", J Med Internet Res 14(1):e33, 2012).
All functions are pure: frame in, frame/arrays/dataclass out.
"""
