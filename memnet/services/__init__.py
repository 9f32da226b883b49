"""Services: orchestrate the domain over the ports; they raise domain errors."""
