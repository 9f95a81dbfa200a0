#ifndef ISLET_COPENSSL_SHIM_H
#define ISLET_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/// Generates a fresh P-256 key; `EVP_EC_gen` is a macro over the variadic
/// `EVP_PKEY_Q_keygen`.
static inline EVP_PKEY *islet_evp_ec_gen_p256(void) {
    return EVP_EC_gen("P-256");
}

/// Generates a fresh RSA key of `bits` bits; `EVP_RSA_gen` is a macro over the
/// variadic `EVP_PKEY_Q_keygen`.
static inline EVP_PKEY *islet_evp_rsa_gen(unsigned int bits) {
    return EVP_RSA_gen(bits);
}

/// Points `*data` at a memory BIO's contents and answers their length;
/// `BIO_get_mem_data` is a macro over `BIO_ctrl`.
static inline long islet_bio_mem_data(BIO *bio, const char **data) {
    return BIO_get_mem_data(bio, (char **)data);
}

/// Frees memory that OpenSSL allocated; `OPENSSL_free` is a macro that adds the call
/// site to `CRYPTO_free`.
static inline void islet_openssl_free(void *pointer) {
    OPENSSL_free(pointer);
}

/// Refuses anything older than TLS 1.2; `SSL_CTX_set_min_proto_version` is a macro
/// over `SSL_CTX_ctrl`.
static inline int islet_ssl_ctx_require_tls12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// Sends the server name (SNI) in the handshake; `SSL_set_tlsext_host_name` is a macro
/// over `SSL_ctrl`.
static inline int islet_ssl_set_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// Lets `SSL_write` report partial writes and be retried from a moved buffer, which
/// non-blocking I/O needs, and reads ahead: as many records as the socket holds in
/// one `read`, instead of a header and a body per record. Buffers are kept between
/// reads (no `SSL_MODE_RELEASE_BUFFERS`): a busy connection would otherwise free
/// and allocate them on every read. `SSL_CTX_set_mode` and `SSL_CTX_set_read_ahead`
/// are macros over `SSL_CTX_ctrl`.
static inline long islet_ssl_ctx_set_nonblocking_modes(SSL_CTX *context) {
    SSL_CTX_set_read_ahead(context, 1);
    return SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// Adds an intermediate certificate to a context's chain, taking ownership on
/// success; `SSL_CTX_add0_chain_cert` is a macro over `SSL_CTX_ctrl`.
static inline int islet_ssl_ctx_add_chain_cert(SSL_CTX *context, X509 *certificate) {
    return (int)SSL_CTX_add0_chain_cert(context, certificate);
}

/// Turns off TLS compression and renegotiation, which HTTP/2 forbids; the option bits
/// are macros of a width that differs between OpenSSL versions.
static inline void islet_ssl_ctx_http2_options(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}

/// Prepares an extension context with no configuration database;
/// `X509V3_set_ctx_nodb` is a macro.
static inline void islet_x509v3_ctx_nodb(X509V3_CTX *context) {
    X509V3_set_ctx_nodb(context);
}

/// The server's ALPN choice: "h2" when the client offers it, otherwise no agreement.
/// A C function because OpenSSL calls it during the handshake.
static inline int islet_alpn_select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                       const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    static const unsigned char h2[] = { 2, 'h', '2' };
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, h2, sizeof(h2), in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/// Installs `islet_alpn_select_h2` on a server context.
static inline void islet_ssl_ctx_select_h2(SSL_CTX *context) {
    SSL_CTX_set_alpn_select_cb(context, islet_alpn_select_h2, NULL);
}

#endif
