"""The sitewalk spider."""
