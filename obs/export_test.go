package obs

// HaveOTLP reports whether this build links the OTLP exporter.
const HaveOTLP = haveOTLP
