//! clrdata: the CLR runtime reconstructed from dump memory (no DAC). Prints nothing.
#![forbid(unsafe_code)]
