"""Portfolio Manager's upload workbooks as PM offers them: sheet names and order, header rows and
column names, the list validations and the lists they name, meter types and unit labels.

These are facts read from PM's own templates ("Add Bills to Existing Meters" and "Add New Meters
to Existing Properties", template version 2.0; tests/pm_export/test_layout.py checks them against
the real files in ../shared/real-inputs). Nothing here imports anything heavy."""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE_VERSION = "v 2.0"
BILLS_TITLE = "Add Bills to Existing Meters - Upload Template"
METERS_TITLE = "Add New Meters to Existing Properties - Upload Template"

# Header rows of every data sheet, exactly as PM writes them (line breaks, double spaces and
# trailing blanks included: PM matches its own headers).
HEADERS: dict[str, tuple[tuple[str | None, ...], ...]] = {
    "Add Bills-Electricity": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Usage\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Demand (kW) (Optional)",
            "Demand Cost ($) (Optional)",
            "Estimation (Required)",
            "Green Power?\n(Required)",
            "Green Power Quantity\n(Required, if Green Power)",
            "Generation Location\n(Required, if you have Green Power)",
            "Generation Facility ID\n(Required, if known)",
            "eGRID Subregion or Province\n(Required, if known)",
            "Fuel Source- Biogas % (Optional)",
            "Fuel Source- Biomass % (Optional)",
            "Fuel Source- Geothermal % (Optional)",
            "Fuel Source- Small Hydropower %  (Optional)",
            "Fuel Source- Solar % (Optional)",
            "Fuel Source - Wind % (Optional)",
            "Fuel Source- Unknown % (Optional)",
        ),
    ),
    "Add Bills-Non Electric": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Quantity\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
        ),
    ),
    "Add Bills-Water": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Usage\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
        ),
    ),
    "Add Bills-IT Energy": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Usage\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
        ),
    ),
    "Add Bills-Flow": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Usage\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
        ),
    ),
    "Add Bills-On-Site": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Energy Used On-Site\n(Required)",
            "Energy Exported Off-Site\n(Required)",
            "Cost\n(Optional)",
            "Meter Unit\n(Pre-filled)",
            "Estimation (Required)",
            "REC Ownership (Required)",
            "Generation Location\n(Required for Arbitrage)",
            "eGRID Subregion or Province\n(Required for Arbitrage if your Generation Location is an eGRID region)",
            "Generation Facility ID\n(Required for Arbitrage if your Generation Location is a specific plant)",
        ),
    ),
    "Add Bills-Delivery": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Consumption ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Delivery Date\n(Required)",
            "Quantity\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
        ),
    ),
    "Regular Waste Amounts": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Entry ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Quantity\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
            "Disposal Destination (Required for all DISPOSED waste and materials, must equal 100%) ",
        ),
        (
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            "Landfill (%)",
            "Incineration (%)",
            "Waste to Energy (%)",
            "Don't Know/Other (%)",
        ),
    ),
    "Intermittent Waste": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Entry ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Date\n(Required)",
            "Quantity\n(Required)",
            "Meter Unit\n(Pre-filled)",
            "Cost\n(Optional)",
            "Estimation (Required)",
            "Disposal Destination (Required for all DISPOSED waste and materials, must equal 100%) ",
        ),
        (
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            "Landfill (%)",
            "Incineration (%)",
            "Waste to Energy (%)",
            "Don't Know/Other (%)",
        ),
    ),
    "Regular Waste-Container": (
        (
            "Meter ID\n(Pre-filled)",
            "Meter Entry ID\n(Pre-filled)",
            "Portfolio Manager ID\n(Pre-filled)",
            "Property  Name\n(Pre-filled)",
            "Meter Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Start Date\n(Required)",
            "End Date\n(Required)",
            "Container Size",
            "Number of Times Emptied (Required)",
            "Average Percent Full",
            "Cost\n(Optional)",
            "Disposal Destination (Required for all DISPOSED waste and materials, must equal 100%) ",
        ),
        (
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            "Landfill (%)",
            "Incineration (%)",
            "Waste to Energy (%)",
            "Don't Know/Other (%)",
        ),
    ),
    "Create Meters (Energy)": (
        (
            "Portfolio Manager ID (Pre-filled)",
            "Property Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            'Other Meter Type Description (Required, if you\'ve selected a Meter Type of "Other") ',
            "Meter Name (Required)",
            "Units\n(Required)",
            "Date Meter Became Active (Required)",
            "In Use? (Required)",
            "Date Meter Became Inactive (Required,\n if Meter NOT In Use)",
            "Bulk or Metered? (Required)",
            "Include in Property Metrics? (Required)",
            "Custom Meter ID 1 Name (Required if you want to add one Custom ID)",
            "Custom Meter ID 1 Value (Required if you want to add one Custom ID)",
            "Custom Meter ID 2 Name (Required if you want to add two Custom IDs)",
            "Custom Meter ID 2 Value (Required if you want to add two Custom IDs)",
            "Custom Meter ID 3 Name (Required if you want to add three Custom IDs)",
            "Custom Meter ID 3 Value (Required if you want to add three Custom IDs)",
        ),
    ),
    "Create Meters (Water)": (
        (
            "Portfolio Manager ID\n(Pre-filled)",
            "Property Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            'Other Meter Type Description (Required, if you\'ve selected a Meter Type of "Other") ',
            "Meter Name (Required)",
            "Units\n(Required)",
            "Date Meter Became Active (Required)",
            "In Use?\n(Required)",
            "Date Meter Became Inactive (Required, if Meter is NOT In Use)",
            "Include in Property Metrics?\n(Required)",
            "Custom Meter ID 1 Name (Required if you want to add one Custom ID)",
            "Custom Meter ID 1 Value (Required if you want to add one Custom ID)",
            "Custom Meter ID 2 Name (Required if you want to add two Custom IDs)",
            "Custom Meter ID 2 Value (Required if you want to add two Custom IDs)",
            "Custom Meter ID 3 Name (Required if you want to add three Custom IDs)",
            "Custom Meter ID 3 Value (Required if you want to add three Custom IDs)",
        ),
    ),
    "Create Meters (IT)": (
        (
            "Portfolio Manager ID\n(Pre-filled)",
            "Property Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Meter Name (Required)",
            "Units\n(Required)",
            "Date Meter Became Active (Required)",
            "In Use?\n(Required)",
            "Date Meter Became Inactive (Required, if Meter is Not In Use)",
            "Data Center Use Meter Applies to (Required, if you have more than one Data Center Property Use)",
            "Custom Meter ID 1 Name (Required if you want to add one Custom ID)",
            "Custom Meter ID 1 Value (Required if you want to add one Custom ID)",
            "Custom Meter ID 2 Name (Required if you want to add two Custom IDs)",
            "Custom Meter ID 2 Value (Required if you want to add two Custom IDs)",
            "Custom Meter ID 3 Name (Required if you want to add three Custom IDs)",
            "Custom Meter ID 3 Value (Required if you want to add three Custom IDs)",
        ),
    ),
    "Create Meters (Flow)": (
        (
            "Portfolio Manager ID (Pre-filled)",
            "Property Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Meter Name (Required)",
            "Units\n(Required)",
            "Date Meter Became Active (Required)",
            "In Use?\n(Required)",
            "Date Meter Became Inactive (Required, if Meter is Not In Use)",
            "Wastewater/Water Treatment Use Meter Applies to\n (Required, if you have more than one Wastewater Treatment Plant Property Use)",
            "Custom Meter ID 1 Name (Required if you want to add one Custom ID)",
            "Custom Meter ID 1 Value (Required if you want to add one Custom ID)",
            "Custom Meter ID 2 Name (Required if you want to add two Custom IDs)",
            "Custom Meter ID 2 Value (Required if you want to add two Custom IDs)",
            "Custom Meter ID 3 Name (Required if you want to add three Custom IDs)",
            "Custom Meter ID 3 Value (Required if you want to add one Custom ID)",
        ),
    ),
    "Create Meters (WasteMaterials)": (
        (
            "Portfolio Manager ID (Pre-filled)",
            "Property Name\n(Pre-filled)",
            "Meter Type\n(Pre-filled)",
            "Meter Name (Required)",
            "How You Will Be Tracking Your Waste/Material Amounts (Fill out either E or F + G.)",
            None,
            None,
            "How often is this waste or material managed? (Regularly or Intermittently) ",
            'Date Tracking Began for Waste/Material (Required if Column H is "Regularly")',
            "Include in Property Metrics? (Required)",
            "Custom Meter ID 1 Name (Required if you want to add one Custom ID)",
            "Custom Meter ID 1 Value (Required if you want to add one Custom ID)",
            "Custom Meter ID 2 Name (Required if you want to add two custom IDs)",
            "Custom Meter ID 2 Value (Required if you want to add two Custom IDs)",
            "Custom Meter ID 3 Name (Required if you want to add three Custom IDs)",
            "Custom Meter ID 3 Value (Required if you want to add three Custom IDs)",
        ),
        (
            None,
            None,
            None,
            None,
            "Units- (Required if you know the amount of your waste or material)\n",
            "Waste/Material Container Size- (Required if you do not have an amount to report) ",
        ),
        (None, None, None, None, None, 'Value (e.g. "3")', 'Units (e.g. "Cubic Meters")'),
    ),
}

INSTRUCTIONS = "Instructions"
LISTS = "Lists"
VALIDATION = "Validation"

ELECTRICITY = "Add Bills-Electricity"
NON_ELECTRIC = "Add Bills-Non Electric"
WATER = "Add Bills-Water"
CREATE_ENERGY = "Create Meters (Energy)"
CREATE_WATER = "Create Meters (Water)"

# Sheet order of each workbook, as PM's.
BILL_SHEETS: tuple[str, ...] = (
    INSTRUCTIONS,
    ELECTRICITY,
    NON_ELECTRIC,
    WATER,
    "Add Bills-IT Energy",
    "Add Bills-Flow",
    "Add Bills-On-Site",
    "Add Bills-Delivery",
    LISTS,
    VALIDATION,
    "Regular Waste Amounts",
    "Intermittent Waste",
    "Regular Waste-Container",
)
METER_SHEETS: tuple[str, ...] = (
    INSTRUCTIONS,
    CREATE_ENERGY,
    CREATE_WATER,
    "Create Meters (IT)",
    "Create Meters (Flow)",
    "Create Meters (WasteMaterials)",
    LISTS,
    VALIDATION,
)

# List validations per sheet: (column, first validated row, defined name). A units column of the
# Create Meters sheets is validated row by row with the list of that row's meter type (PM's own
# files do the same with ELECTRICUnits / AllEnergyUnits); UNITS marks it.
UNITS = "<units of the row's meter type>"
LIST_VALIDATIONS: dict[str, tuple[tuple[str, int, str], ...]] = {
    ELECTRICITY: (("N", 2, "Boolean"), ("O", 2, "Boolean")),
    NON_ELECTRIC: (("L", 2, "Boolean"),),
    WATER: (("L", 2, "Boolean"),),
    "Add Bills-IT Energy": (("L", 2, "Boolean"),),
    "Add Bills-Flow": (("L", 2, "Boolean"),),
    "Add Bills-On-Site": (("M", 2, "Boolean"),),
    "Add Bills-Delivery": (("K", 2, "Boolean"),),
    "Regular Waste Amounts": (("L", 3, "Boolean"),),
    "Intermittent Waste": (("K", 3, "Boolean"),),
    "Regular Waste-Container": (("K", 3, "Waste_Percent_Full"),),
    CREATE_ENERGY: (
        ("C", 2, "EnergyMeters"),
        ("F", 2, UNITS),
        ("H", 2, "Boolean"),
        ("J", 2, "BulkMetered"),
        ("K", 2, "Boolean"),
    ),
    CREATE_WATER: (
        ("C", 2, "WaterMeters"),
        ("F", 2, "WaterUnits"),
        ("H", 2, "Boolean"),
        ("J", 2, "Boolean"),
    ),
    "Create Meters (IT)": (("C", 2, "ITMeters"), ("E", 2, "ITMeterUnits"), ("G", 2, "Boolean")),
    "Create Meters (Flow)": (("C", 2, "Flow"), ("E", 2, "FlowMeterUnits"), ("G", 2, "Boolean")),
    "Create Meters (WasteMaterials)": (
        ("H", 4, "WasteFrequency"),
        ("J", 4, "Boolean"),
    ),
}

# PM's unit labels per fuel (the Create Meters workbook's per-type lists) and for water.
MMBTU = "MBtu/ MMBtu/ Dth (million Btu/ dekatherm)"
_ELECTRIC = (
    "GJ",
    "kBtu (thousand Btu)",
    "kWh (thousand Watt-hours)",
    MMBTU,
    "MWh (million Watt-hours)",
)
_OIL = ("Gallons (UK)", "Gallons (US)", "GJ", "kBtu (thousand Btu)", "Liters", MMBTU)
UNIT_LISTS: dict[str, tuple[str, ...]] = {
    "ELECTRICUnits": _ELECTRIC,
    "NATURAL_GASUnits": (
        "ccf (hundred cubic feet)",
        "cf (cubic feet)",
        "cm (cubic meters)",
        "GJ",
        "kBtu (thousand Btu)",
        "kcf (thousand cubic feet)",
        MMBTU,
        "Mcf (million cubic feet)",
        "therms",
    ),
    "DISTRICT_STEAMUnits": (
        "GJ",
        "kBtu (thousand Btu)",
        "kg (kilograms)",
        "kLbs. (thousand pounds)",
        "Lbs. (pounds)",
        MMBTU,
        "MLbs. (million pounds)",
        "therms",
    ),
    "DISTRICT_HOT_WATERUnits": ("GJ", "kBtu (thousand Btu)", MMBTU, "therms"),
    "DISTRICT_CHILLED_WATER_OTHERUnits": ("GJ", "kBtu (thousand Btu)", MMBTU, "ton hours"),
    "FUEL_OIL_NO_2Units": _OIL,
    "DIESELUnits": _OIL,
    "PROPANEUnits": (
        "ccf (hundred cubic feet)",
        "cf (cubic feet)",
        "Gallons (UK)",
        "Gallons (US)",
        "GJ",
        "kBtu (thousand Btu)",
        "kcf (thousand cubic feet)",
        "Liters",
        MMBTU,
    ),
    "WaterUnits": (
        "ccf (hundred cubic feet)",
        "cf (cubic feet)",
        "cGal (hundred gallons) (UK)",
        "cGal (hundred gallons) (US)",
        "cm (cubic meters)",
        "Gallons (UK)",
        "Gallons (US)",
        "kcf (thousand cubic feet)",
        "kcm (thousand cubic meters)",
        "kGal (thousand gallons) (UK)",
        "kGal (thousand gallons) (US)",
        "Liters",
        "Mcf (million cubic feet)",
        "MGal (million gallons) (UK)",
        "MGal (million gallons) (US)",
    ),
}

# The other named lists the sheets' validations use.
NAMED_LISTS: dict[str, tuple[object, ...]] = {
    "Boolean": ("Yes", "No"),
    "BulkMetered": ("Bulk ", "Metered"),  # PM's own spelling, trailing blank included
    "EnergyMeters": (
        "Electric - Grid",
        "Natural Gas",
        "Fuel Oil (No. 2)",
        "District Steam",
        "Wood",
        "Propane",
        "Other:",
        "Kerosene",
        "Fuel Oil (No. 1)",
        "Fuel Oil (No. 5 and No. 6)",
        "Diesel",
        "Coal (anthracite)",
        "Coal (bituminous)",
        "Coke",
        "Fuel Oil (No. 4)",
        "District Hot Water",
        "District Chilled Water - Electric",
        "District Chilled Water - Absorption",
        "District Chilled Water - Engine",
        "District Chilled Water - Other",
        "Electric - Solar",
        "Electric - Wind",
    ),
    "WaterMeters": (
        "Potable Indoor",
        "Reclaimed Indoor",
        "Other Indoor",
        "Potable Outdoor",
        "Reclaimed Outdoor",
        "Other Outdoor",
        "Potable: Mixed Indoor/Outdoor",
        "Reclaimed: Mixed Indoor/Outdoor",
        "Other: Mixed Indoor/Outdoor",
        "Well Water Indoor",
        "Well Water Outdoor",
        "Well Water: Mixed Indoor/Outdoor",
    ),
    "ITMeters": (
        "Uninterruptible Power Supply (UPS) Output Meter",
        "Power Distribution Unit (PDU) Input Meter",
        "Power Distribution Unit (PDU) Output Meter",
        "IT Equipment Input Meter (on single piece of equipment)",
    ),
    "ITMeterUnits": ("kWh (thousand Watt-hours)",),
    "Flow": ("Average Influent Flow",),
    "FlowMeterUnits": ("Cubic Meters per Day", "Millions of Gallons per Day"),
    "WasteFrequency": ("Regularly", "Intermittently"),
    "Waste_Percent_Full": (0, 0.25, 0.5, 0.75, 1),
}
BILL_LIST_NAMES = ("Boolean", "Waste_Percent_Full")


@dataclass(frozen=True, slots=True)
class PmKind:
    """How PM keeps one of the service's meter types: the bills sheet and the Meter Type PM
    pre-fills there, the Create Meters sheet, type and the defined name of its units list."""

    bills_sheet: str
    bills_type: str
    meters_sheet: str
    meters_type: str
    units_list: str

    @property
    def units(self) -> tuple[str, ...]:
        return UNIT_LISTS[self.units_list]


# The service's meter types PM has bills for. PM's bills sheet names a grid meter "Electricity -
# Grid Purchase" where its Create Meters list says "Electric - Grid" (both from PM's own files).
# The service's one fuel_oil type is PM's heating oil, No. 2; its district_cooling says nothing
# about the chiller, which is PM's "District Chilled Water - Other".
KINDS: dict[str, PmKind] = {
    "electricity": PmKind(
        ELECTRICITY,
        "Electricity - Grid Purchase",
        CREATE_ENERGY,
        "Electric - Grid",
        "ELECTRICUnits",
    ),
    "natural_gas": PmKind(
        NON_ELECTRIC, "Natural Gas", CREATE_ENERGY, "Natural Gas", "NATURAL_GASUnits"
    ),
    "steam": PmKind(
        NON_ELECTRIC, "District Steam", CREATE_ENERGY, "District Steam", "DISTRICT_STEAMUnits"
    ),
    "district_heating": PmKind(
        NON_ELECTRIC,
        "District Hot Water",
        CREATE_ENERGY,
        "District Hot Water",
        "DISTRICT_HOT_WATERUnits",
    ),
    "district_cooling": PmKind(
        NON_ELECTRIC,
        "District Chilled Water - Other",
        CREATE_ENERGY,
        "District Chilled Water - Other",
        "DISTRICT_CHILLED_WATER_OTHERUnits",
    ),
    "fuel_oil": PmKind(
        NON_ELECTRIC, "Fuel Oil (No. 2)", CREATE_ENERGY, "Fuel Oil (No. 2)", "FUEL_OIL_NO_2Units"
    ),
    "diesel": PmKind(NON_ELECTRIC, "Diesel", CREATE_ENERGY, "Diesel", "DIESELUnits"),
    "lpg": PmKind(NON_ELECTRIC, "Propane", CREATE_ENERGY, "Propane", "PROPANEUnits"),
    "water": PmKind(
        WATER,
        "Municipally Supplied Potable Water - All",
        CREATE_WATER,
        "Potable: Mixed Indoor/Outdoor",
        "WaterUnits",
    ),
}

# Why the other meter types are not written (shown in the summary, never silent).
NOT_IN_PM: dict[str, str] = {
    "solar": "PM keeps on-site generation on its On-Site sheet as energy used on site and "
    "exported, which the service's readings do not separate",
    "chp": "PM has no CHP meter: it records the fuel a CHP plant burns on that fuel's meter",
    "waste_landfill": "PM's waste sheets take disposal destinations the service does not hold",
    "waste_recycling": "PM's waste sheets take disposal destinations the service does not hold",
    "waste_compost": "PM's waste sheets take disposal destinations the service does not hold",
}

# The service's unit → PM's label. The service's "Mlbs" is a thousand pounds (decisions I6), so
# it is PM's kLbs.
PM_UNIT_LABEL: dict[str, str] = {
    "kWh": "kWh (thousand Watt-hours)",
    "MWh": "MWh (million Watt-hours)",
    "GJ": "GJ",
    "kBtu": "kBtu (thousand Btu)",
    "MMBtu": MMBTU,
    "therms": "therms",
    "ccf": "ccf (hundred cubic feet)",
    "cf": "cf (cubic feet)",
    "m3": "cm (cubic meters)",
    "litres": "Liters",
    "gallons": "Gallons (US)",
    "kgal": "kGal (thousand gallons) (US)",
    "lbs": "Lbs. (pounds)",
    "klbs": "kLbs. (thousand pounds)",
    "Mlbs": "kLbs. (thousand pounds)",
    "kg": "kg (kilograms)",
    "ton_hours": "ton hours",
}
# A unit PM does not offer for the meter's type is converted: to its thousandfold where PM has it
# (Wh → kWh, MJ → GJ), else to kBtu, the energy unit PM offers for every fuel.
CONVERT_TO: dict[str, str] = {"Wh": "kWh", "MJ": "GJ"}
FALLBACK_UNIT = "kBtu"
