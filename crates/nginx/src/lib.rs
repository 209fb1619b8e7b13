//! nginx configuration: crossplane-compatible parser and builder, and the tuning advisor.
