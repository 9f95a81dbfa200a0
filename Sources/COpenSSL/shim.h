#ifndef ISLET_COPENSSL_SHIM_H
#define ISLET_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/// Generates a fresh P-256 key; `EVP_EC_gen` is a macro over the variadic
/// `EVP_PKEY_Q_keygen`.
static inline EVP_PKEY *islet_evp_ec_gen_p256(void) {
    return EVP_EC_gen("P-256");
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

#endif
