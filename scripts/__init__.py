"""Deployment helpers run on the deploying machine (the azd hooks of ``azure.yaml``), with
the repository's virtual environment; never shipped (``.funcignore`` keeps ``scripts/``
out of the package). docs/deploy.md."""
