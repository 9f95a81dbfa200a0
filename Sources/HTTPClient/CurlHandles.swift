internal import CCurl
import Glibc

/// libcurl's process-wide setup, done once before the first handle is made
/// (`curl_global_init`, thread-safe in a libcurl built "threadsafe", and run once
/// here by the static's lazy initialisation anyway). libcurl is told not to use
/// signals (`CURLOPT_NOSIGNAL`), so a peer that closes while OpenSSL writes raises
/// SIGPIPE, ignored here as the HTTP/2 event loop does.
enum CurlLibrary {
    /// `CURLE_OK`, or why libcurl could not start.
    static let initialized: CURLcode = {
        signal(SIGPIPE, SIG_IGN)
        return curl_global_init(ISLET_CURL_GLOBAL_DEFAULT)
    }()

    /// libcurl's text for `code`.
    static func text(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}

/// A multi handle, freed in `deinit`. Owned by the client's ``TransferLoop`` and
/// used on its thread only, except for `curl_multi_wakeup`, which libcurl allows
/// from any thread (see `MultiWakeup`).
final class MultiHandle {
    let pointer: UnsafeMutableRawPointer

    init?() {
        guard let pointer = curl_multi_init() else { return nil }
        self.pointer = pointer
    }

    deinit { curl_multi_cleanup(pointer) }
}

/// The multi handle's pointer, for `curl_multi_wakeup` from other threads.
/// `@unchecked Sendable`: `curl_multi_wakeup` is the one libcurl multi function
/// documented as callable from any thread
/// (https://curl.se/libcurl/c/curl_multi_wakeup.html), and the pointer is used only
/// under the loop's inbox lock, from which the loop removes it before it frees the
/// handle.
struct MultiWakeup: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer

    func wake() { _ = curl_multi_wakeup(pointer) }
}

/// An easy handle and its error buffer, freed in `deinit`. Used on the loop's
/// thread only, for one transfer at a time, and kept in a free list between
/// transfers; removed from the multi handle before it is released.
final class EasyHandle {
    let pointer: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`: libcurl's detailed message for a failed transfer.
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let pointer = curl_easy_init() else { return nil }
        self.pointer = pointer
        errorBuffer = .allocate(capacity: Int(ISLET_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(ISLET_CURL_ERROR_SIZE))
    }

    /// libcurl's message for the last failure, if it wrote one.
    var errorMessage: String? {
        errorBuffer[0] == 0 ? nil : String(cString: errorBuffer).trimmingSuffix("\n")
    }

    deinit {
        curl_easy_cleanup(pointer)
        errorBuffer.deallocate()
    }
}

/// A `curl_slist` of request header lines, freed in `deinit`; owned by one transfer
/// and kept until it ends (libcurl reads the list without copying it).
final class HeaderList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    init() {}

    /// Appends `line`; false when libcurl could not (out of memory).
    func append(_ line: String) -> Bool {
        guard let appended = curl_slist_append(pointer, line) else { return false }
        pointer = appended
        return true
    }

    deinit { curl_slist_free_all(pointer) }
}

extension String {
    /// The string without trailing `suffix` characters.
    fileprivate func trimmingSuffix(_ suffix: Character) -> String {
        var text = Substring(self)
        while text.last == suffix { text.removeLast() }
        return String(text)
    }
}
