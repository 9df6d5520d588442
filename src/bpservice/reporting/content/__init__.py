"""What each report says, as pure functions: plain dicts in (gathered by ../gather.py from the
benchmark engine), a format-neutral Document out. Nothing here touches the database or the
clock. One module per report type; blocks.py holds what they share, city_law.py what the LL97
and BERDO assessments share.

Shapes of the inputs:
- `report`: {id, type, format, period: {start, end} (dates), generated_at (datetime), filters?}
- `organisation`: {id, name}
- a building entry: {building: {id, name, primary_use_type, use_types, gfa_m2, year_built, floors,
  occupancy_pct, operating_hours_week}, property: {id, name, type, internal_ref, street, city,
  state, postal_code, country}, benchmark: the engine's building result (or None), energy_kwh:
  {meter type: annualised kWh}, water_m3: float | None}
"""
