//! Integration tests of the image builder, compiled as one binary.

// The image of this test binary, checked with skopeo and umoci and run from its root
// filesystem.
mod image;
