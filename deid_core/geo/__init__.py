"""Geography: clustering small areas instead of cropping codes, and geoproxy risk (El Emam & Arbuckle,
*Anonymizing Health Data*, ch. 9; docs/geography.md)."""
