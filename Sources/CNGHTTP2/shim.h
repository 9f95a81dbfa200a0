#ifndef ISLET_CNGHTTP2_SHIM_H
#define ISLET_CNGHTTP2_SHIM_H

#include <nghttp2/nghttp2.h>

/// The runtime library's version string; `nghttp2_version` may return NULL in theory,
/// and this keeps the optional-pointer dance out of Swift.
static inline const char *islet_nghttp2_version_string(void) {
    nghttp2_info *info = nghttp2_version(0);
    return info ? info->version_str : "unknown";
}

#endif
