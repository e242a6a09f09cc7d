// libtss2 (the TPM2 Software Stack: ESYS, the TCTI loader, marshalling and response-code
// decoding) for Sources/TPMSealing/TPM2*.swift, the only Swift files that include it.
// Response codes built from other macros do not import into Swift, so the few that are
// looked at are re-created here.
#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>

/// The layer of a TSS2_RC (TSS2_RC_LAYER_MASK): 0 for codes from the TPM itself.
static const TSS2_RC keychain_tss2_rc_layer_mask = TSS2_RC_LAYER_MASK;
/// Codes from the TCTI (TSS2_TCTI_RC_LAYER): no connection, I/O errors.
static const TSS2_RC keychain_tss2_tcti_layer = TSS2_TCTI_RC_LAYER;
/// Codes a resource manager returns on the TPM's behalf (TSS2_RESMGR_TPM_RC_LAYER).
static const TSS2_RC keychain_tss2_resmgr_tpm_layer = TSS2_RESMGR_TPM_RC_LAYER;
/// TPM2_RC_FMT1: set in format-1 codes, which carry a handle, session or parameter number.
static const TSS2_RC keychain_tpm2_rc_fmt1 = TPM2_RC_FMT1;

/// TPM2_RC_VALUE: a value out of range (PolicyPCR with a digest that no longer matches).
static const TSS2_RC keychain_tpm2_rc_value = TPM2_RC_VALUE;
/// TPM2_RC_POLICY_FAIL: the policy session does not satisfy the object's authPolicy.
static const TSS2_RC keychain_tpm2_rc_policy_fail = TPM2_RC_POLICY_FAIL;
/// TPM2_RC_INTEGRITY: the private area's HMAC does not check under this parent.
static const TSS2_RC keychain_tpm2_rc_integrity = TPM2_RC_INTEGRITY;
/// TPM2_RC_BINDING: the public and private areas are not cryptographically bound.
static const TSS2_RC keychain_tpm2_rc_binding = TPM2_RC_BINDING;
/// TPM2_RC_SENSITIVE: the private area did not unmarshal after decryption.
static const TSS2_RC keychain_tpm2_rc_sensitive = TPM2_RC_SENSITIVE;
/// TPM2_RC_SIZE: a structure of the wrong size (a private area cut or padded).
static const TSS2_RC keychain_tpm2_rc_size = TPM2_RC_SIZE;
/// TPM2_RC_KEY: key fields that do not fit the parent.
static const TSS2_RC keychain_tpm2_rc_key = TPM2_RC_KEY;
/// TPM2_RC_AUTH_UNAVAILABLE: no usable authValue or authPolicy for the object.
static const TSS2_RC keychain_tpm2_rc_auth_unavailable = TPM2_RC_AUTH_UNAVAILABLE;
