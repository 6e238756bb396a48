"""Pure page models built from reports, and the one jinja2 environment that renders them."""
