#ifndef ISLET_CMICROHTTPD_SHIM_H
#define ISLET_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Starts a daemon on an already-listening socket. `MHD_start_daemon` is variadic
/// (an option list ended by MHD_OPTION_END), which Swift cannot call; this fixes the
/// options Islet uses and gives each a typed parameter.
/// `uri_logger` is called with the raw request target (still percent-encoded, query
/// included) as soon as the request line is read; what it answers is the request's
/// context (`*req_cls`) in the access handler and the completion callback.
static inline struct MHD_Daemon *islet_mhd_start_daemon(
    unsigned int flags,
    int listen_socket,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    void *(*uri_logger)(void *context, const char *uri, struct MHD_Connection *connection), void *uri_context,
    unsigned int thread_pool_size,
    unsigned int connection_limit,
    unsigned int connection_timeout_seconds) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_context,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_socket,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_logger, uri_context,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
                            MHD_OPTION_END);
}

/// The peer address of a connection, or NULL. `MHD_get_connection_info` is variadic
/// and answers a union; this picks the one member Islet reads.
static inline const struct sockaddr *islet_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/// Number of connections the daemon holds now. `MHD_get_daemon_info` is variadic and
/// answers a union; this picks the one member Islet reads.
static inline unsigned int islet_mhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/// A response whose body libmicrohttpd copies at once. Spelled here because the
/// memory-mode enum imports into Swift under names that differ between versions.
static inline struct MHD_Response *islet_mhd_response_copying(size_t size, const void *bytes) {
    return MHD_create_response_from_buffer(size, (void *)bytes, MHD_RESPMEM_MUST_COPY);
}

/// The socket of a connection, or -1. `MHD_get_connection_info` is variadic and
/// answers a union; this picks the member. libmicrohttpd owns the socket: Islet only
/// watches it for a hang-up while the connection is suspended, and never closes it.
static inline int islet_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

/// A response of unknown length (sent chunked) whose body `reader` produces as it
/// goes; `MHD_SIZE_UNKNOWN` is a cast macro that Swift does not import.
static inline struct MHD_Response *islet_mhd_response_streaming(
    size_t block_size, MHD_ContentReaderCallback reader, void *context, MHD_ContentReaderFreeCallback free_context) {
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block_size, reader, context, free_context);
}

/// What a content reader answers at the end of its body, and to abort it (the
/// connection is closed without the last chunk); cast macros in microhttpd.h.
static const ssize_t ISLET_MHD_READER_END_OF_STREAM = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t ISLET_MHD_READER_END_WITH_ERROR = MHD_CONTENT_READER_END_WITH_ERROR;

#endif
