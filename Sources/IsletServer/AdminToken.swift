import Foundation
import IsletCore
import IsletCrypto

/// The admin token: configured, or generated once into the data folder.
enum AdminToken {
    /// The configured token, the one kept in the data folder, or a new one
    /// (`generated`), which `save` writes once the server has started with it.
    static func load(_ configuration: Configuration) throws(ConfigurationError) -> (token: String, generated: Bool) {
        if let token = configuration.adminToken { return (token, false) }
        let path = configuration.adminTokenPath
        if let data = FileManager.default.contents(atPath: path) {
            PrivateFile.tighten(path)
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count >= 16 else {
                throw ConfigurationError(.unusable, setting: Configuration.label(of: \.adminToken), message: "\(path) holds no usable token; delete it to have one generated")
            }
            return (token, false)
        }
        do {
            return ("islet_admin_" + Base64URL.encode(try SecureRandom.bytes(32)), true)
        } catch {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.adminToken), message: "cannot generate a token: \(error)")
        }
    }

    /// Writes a generated token into the data folder (mode 0600), never over a
    /// file that is already there.
    static func save(_ token: String, _ configuration: Configuration) throws(ConfigurationError) {
        do {
            try PrivateFile.create(configuration.adminTokenPath, token + "\n")
        } catch {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.adminToken), message: error.description)
        }
    }
}
