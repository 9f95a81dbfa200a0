#ifndef ISLET_CCURL_SHIM_H
#define ISLET_CCURL_SHIM_H

/* The wrappers below are the type check: each option is set through the one
   wrapper that matches its documented type. */
#define CURL_DISABLE_TYPECHECK 1

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which
   Swift cannot call: one typed wrapper per kind of argument Islet passes.
   https://curl.se/libcurl/c/curl_easy_setopt.html */

/// Sets an option that takes a `long` (flags, sizes, timeouts); variadic in C.
static inline CURLcode islet_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

/// Sets an option that takes a `curl_off_t` (`CURLOPT_POSTFIELDSIZE_LARGE`); variadic in C,
/// where passing a `long` instead would be read as the wrong width on some platforms.
static inline CURLcode islet_curl_easy_setopt_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

/// Sets an option that takes a C string, which libcurl copies; variadic in C.
static inline CURLcode islet_curl_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}

/// Sets an option that takes a pointer libcurl keeps without copying (callback data,
/// the error buffer, a header list); variadic in C.
static inline CURLcode islet_curl_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}

/// Sets `CURLOPT_WRITEFUNCTION` or `CURLOPT_HEADERFUNCTION` (both take this type); a
/// function pointer through C varargs needs its exact type.
static inline CURLcode islet_curl_easy_setopt_write_callback(CURL *easy, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

/// Sets `CURLOPT_OPENSOCKETFUNCTION`; a function pointer through C varargs needs its
/// exact type.
static inline CURLcode islet_curl_easy_setopt_opensocket_callback(CURL *easy, CURLoption option, curl_opensocket_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

/// Sets a multi option that takes a `long` (connection limits); variadic in C.
static inline CURLMcode islet_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// Reads a `long` transfer fact (`CURLINFO_RESPONSE_CODE`); variadic in C.
static inline CURLcode islet_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

/// The result code of a finished transfer: `CURLMsg` keeps it in an anonymous union.
static inline CURLcode islet_curl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

/// Copies the IP address of the socket libcurl is about to open into `bytes` (16 long)
/// and answers how many bytes it has: 4 (IPv4), 16 (IPv6), or 0 for another family.
/// The address may be longer than the `struct sockaddr` the header declares (an IPv6
/// address is), so it is read in place, never copied into Swift as that struct.
static inline int islet_curl_sockaddr_ip(const struct curl_sockaddr *address, uint8_t *bytes) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)&address->addr;
        memcpy(bytes, &v4->sin_addr, 4);
        return 4;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&address->addr;
        memcpy(bytes, &v6->sin6_addr, 16);
        return 16;
    }
    return 0;
}

/// Opens the socket libcurl asked for, close-on-exec: what libcurl does when no
/// `CURLOPT_OPENSOCKETFUNCTION` is set (and -1, `CURL_SOCKET_BAD`, on failure).
static inline curl_socket_t islet_curl_open_socket(const struct curl_sockaddr *address) {
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

/// `curl_global_init`'s usual flags; a macro of macros in C.
static const long ISLET_CURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;

/// What an open-socket callback answers to refuse a connection; a macro in C.
static const curl_socket_t ISLET_CURL_SOCKET_BAD = CURL_SOCKET_BAD;

/// The size `CURLOPT_ERRORBUFFER` must have; a macro in C.
static const int ISLET_CURL_ERROR_SIZE = CURL_ERROR_SIZE;

#endif
