"""ENERGY STAR Portfolio Manager property types → the service's use types (docs/decisions.md F11).

The names are PM's "Primary Property Type" values as its exports write them. The table is fixed and
whole-name: a PM type that is not listed is refused by the caller with the row and the value, so an
unfamiliar type is never mapped by a guess. PM's "Other - …" types go to `other`, except where the
suffix names a category the service has (e.g. "Other - Education")."""

from __future__ import annotations

_TABLE: dict[str, tuple[str, ...]] = {
    "office": (
        "Office",
        "Financial Office",
        "Bank Branch",
        "Courthouse",
    ),
    "retail": (
        "Retail Store",
        "Supermarket/Grocery Store",
        "Wholesale Club/Supercenter",
        "Convenience Store with Gas Station",
        "Convenience Store without Gas Station",
        "Enclosed Mall",
        "Strip Mall",
        "Lifestyle Center",
        "Automobile Dealership",
        "Food Sales",
        "Other - Mall",
        "Vehicle Dealership",
    ),
    "residential": (
        "Multifamily Housing",
        "Residence Hall/Dormitory",
        "Single Family Home",
        "Residential Care Facility",
        "Other - Lodging/Residential",
        "Barracks",
    ),
    "hotel": ("Hotel", "Motel"),
    "healthcare": (
        "Hospital (General Medical & Surgical)",
        "Other/Specialty Hospital",
        "Medical Office",
        "Outpatient Rehabilitation/Physical Therapy",
        "Urgent Care/Clinic/Other Outpatient",
        "Ambulatory Surgical Center",
        "Senior Care Community",
        "Senior Living Community",
    ),
    "education": (
        "K-12 School",
        "College/University",
        "Pre-school/Daycare",
        "Vocational School",
        "Adult Education",
        "Other - Education",
    ),
    "industrial": (
        "Manufacturing/Industrial Plant",
        "Energy/Power Station",
        "Drinking Water Treatment & Distribution",
        "Wastewater Treatment Plant",
        "Other - Utility",
    ),
    "warehouse": (
        "Non-Refrigerated Warehouse",
        "Refrigerated Warehouse",
        "Distribution Center",
        "Self-Storage Facility",
    ),
    "data_centre": ("Data Center",),
    "laboratory": ("Laboratory",),
    "restaurant": (
        "Restaurant",
        "Fast Food Restaurant",
        "Bar/Nightclub",
        "Food Service",
        "Other - Restaurant/Bar",
    ),
    "assembly": (
        "Worship Facility",
        "Convention Center",
        "Social/Meeting Hall",
        "Performing Arts",
        "Movie Theater",
        "Museum",
        "Library",
        "Stadium (Open)",
        "Stadium (Closed)",
        "Transportation Terminal/Station",
        "Other - Entertainment/Public Assembly",
    ),
    "leisure": (
        "Fitness Center/Health Club/Gym",
        "Ice/Curling Rink",
        "Swimming Pool",
        "Bowling Alley",
        "Indoor Arena",
        "Race Track",
        "Roller Rink",
        "Aquarium",
        "Zoo",
        "Other - Recreation",
        "Other - Stadium",
    ),
    "mixed_use": ("Mixed Use Property",),
    "other": (
        "Parking",
        "Repair Services (Vehicle, Shoe, Locksmith, etc.)",
        "Personal Services (Health/Beauty, Dry Cleaning, etc.)",
        "Other - Services",
        "Other - Public Services",
        "Fire Station",
        "Police Station",
        "Prison/Incarceration",
        "Other - Technology/Science",
        "Other",
    ),
}

_BY_NAME: dict[str, str] = {
    " ".join(name.split()).casefold(): use for use, names in _TABLE.items() for name in names
}


def pm_use_type(text: str) -> str | None:
    """The service use type for a Portfolio Manager property type name, or None if not listed."""
    return _BY_NAME.get(" ".join(str(text).split()).casefold())
