/*
 * oci_ref.h — validation of container image references (task.image) by the
 * OCI distribution reference grammar.
 */
#ifndef GPUGATE_OCI_REF_H
#define GPUGATE_OCI_REF_H

#include <stdbool.h>

/* Longest reference accepted, in bytes (name ≤ 255, tag, digest). */
#define OCI_REF_MAX 512

/*
 * True when ref (borrowed, NUL-terminated) is a well-formed image
 * reference: [registry[:port]/]path[:tag][@digest]. Pure and thread-safe.
 */
bool oci_ref_valid(const char *ref);

#endif
