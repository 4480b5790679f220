"""Command-line interface (`spatialscout ...`)."""
