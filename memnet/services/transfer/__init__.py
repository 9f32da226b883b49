"""Taking a user's memory to another deployment (issue 27; docs/decisions.md, "The
export archive (memnet-export/1)")."""
