"""Reviewer reproduction: publish a sign-off bundle, replay its recorded responses without a GPU."""
