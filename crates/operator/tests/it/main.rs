//! Integration tests of the operator, compiled as one binary.

// The CRD as YAML, against a golden file.
mod crd;
