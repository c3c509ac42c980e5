package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func TestOrganizations(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		org := createOrg(t, s, "acme")

		t.Run("RoundTrip", func(t *testing.T) {
			got, err := s.FindOrganizationByID(ctx, org.ID)
			require.NoError(t, err)
			require.Equal(t, org, got)
			got, err = s.FindOrganizationByName(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, org, got)
		})
		t.Run("NotFound", func(t *testing.T) {
			_, err := s.FindOrganizationByID(ctx, domain.NewID(domain.PrefixOrganization))
			require.ErrorIs(t, err, domain.ErrNotFound)
			_, err = s.FindOrganizationByName(ctx, "nobody")
			require.ErrorIs(t, err, domain.ErrNotFound)
			require.ErrorIs(t, s.SetOrganizationStatus(ctx, "org_missing", domain.OrgSuspended), domain.ErrNotFound)
		})
		t.Run("DuplicateName", func(t *testing.T) {
			dup := &domain.Organization{ID: domain.NewID(domain.PrefixOrganization), Name: "acme", Status: domain.OrgActive, CreatedAt: now()}
			require.ErrorIs(t, s.CreateOrganization(ctx, dup), domain.ErrDuplicate)
		})
		t.Run("DuplicateID", func(t *testing.T) {
			dup := *org
			dup.Name = "other name"
			require.ErrorIs(t, s.CreateOrganization(ctx, &dup), domain.ErrDuplicate)
		})
		t.Run("SetStatus", func(t *testing.T) {
			require.NoError(t, s.SetOrganizationStatus(ctx, org.ID, domain.OrgSuspended))
			got, err := s.FindOrganizationByID(ctx, org.ID)
			require.NoError(t, err)
			require.Equal(t, domain.OrgSuspended, got.Status)
			// Setting the status it already has is no error.
			require.NoError(t, s.SetOrganizationStatus(ctx, org.ID, domain.OrgSuspended))
		})
		t.Run("EmptyID", func(t *testing.T) {
			require.Error(t, s.CreateOrganization(ctx, &domain.Organization{Name: "no id", CreatedAt: now()}))
		})
	})
}

func TestProjects(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		got, err := s.FindProjectByID(ctx, tn.prj.ID)
		require.NoError(t, err)
		require.Equal(t, tn.prj, got)

		got, err = s.FindProjectByName(ctx, tn.org.ID, "main")
		require.NoError(t, err)
		require.Equal(t, tn.prj, got)
		got, err = s.FindProjectByName(ctx, tn.other.ID, "main")
		require.NoError(t, err)
		require.Equal(t, tn.oprj, got, "the same name in another organization is another project")

		_, err = s.FindProjectByName(ctx, tn.org.ID, "absent")
		require.ErrorIs(t, err, domain.ErrNotFound)
		_, err = s.FindProjectByID(ctx, domain.NewID(domain.PrefixProject))
		require.ErrorIs(t, err, domain.ErrNotFound)

		dup := &domain.Project{ID: domain.NewID(domain.PrefixProject), OrganizationID: tn.org.ID, Name: "main", CreatedAt: now()}
		require.ErrorIs(t, s.CreateProject(ctx, dup), domain.ErrDuplicate)

		require.NoError(t, s.SetProjectConcurrencyLimit(ctx, tn.prj.ID, 7))
		got, err = s.FindProjectByID(ctx, tn.prj.ID)
		require.NoError(t, err)
		require.Equal(t, 7, got.ConcurrencyLimit)
		require.ErrorIs(t, s.SetProjectConcurrencyLimit(ctx, "prj_missing", 1), domain.ErrNotFound)
	})
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		full := &domain.APIKey{
			ID: domain.NewID(domain.PrefixAPIKey), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
			Environment: domain.EnvLive, Name: "ci", Hash: "hash-full", Hint: "fm_live_abcd",
			Scopes: []string{domain.ScopeFilesRead, domain.ScopeJobsWrite}, IPAllowList: []string{"10.0.0.0/8"},
			AllowedOperations: []string{"image.resize"}, AllowedProjects: []string{tn.prj2.ID},
			SpendLimit: 1000, RateLimit: 60, ExpiresAt: ptr(now().AddDate(0, 1, 0)), CreatedAt: now(),
		}
		bare := &domain.APIKey{
			ID: domain.NewID(domain.PrefixAPIKey), OrganizationID: tn.org.ID, ProjectID: tn.prj2.ID,
			Environment: domain.EnvTest, Name: "bare", Hash: "hash-bare", Hint: "fm_test_abcd", CreatedAt: now(),
		}
		foreign := &domain.APIKey{
			ID: domain.NewID(domain.PrefixAPIKey), OrganizationID: tn.other.ID, ProjectID: tn.oprj.ID,
			Environment: domain.EnvLive, Name: "foreign", Hash: "hash-foreign", CreatedAt: now(),
		}
		for _, k := range []*domain.APIKey{full, bare, foreign} {
			require.NoError(t, s.CreateAPIKey(ctx, k))
		}

		t.Run("RoundTrip", func(t *testing.T) {
			got, err := s.FindAPIKeyByID(ctx, full.ID)
			require.NoError(t, err)
			require.Equal(t, full, got)
			got, org, prj, err := s.FindAPIKeyByHash(ctx, "hash-full")
			require.NoError(t, err)
			require.Equal(t, full, got)
			wantOrg, err := s.FindOrganizationByID(ctx, full.OrganizationID)
			require.NoError(t, err)
			require.Equal(t, wantOrg, org)
			wantPrj, err := s.FindProjectByID(ctx, full.ProjectID)
			require.NoError(t, err)
			require.Equal(t, wantPrj, prj)
		})
		t.Run("NilListsComeBackEmpty", func(t *testing.T) {
			got, err := s.FindAPIKeyByID(ctx, bare.ID)
			require.NoError(t, err)
			for _, l := range [][]string{got.Scopes, got.IPAllowList, got.AllowedOperations, got.AllowedProjects} {
				require.NotNil(t, l)
				require.Empty(t, l)
			}
			require.Nil(t, bare.Scopes, "the caller's struct is left as it was")
		})
		t.Run("NotFound", func(t *testing.T) {
			_, err := s.FindAPIKeyByID(ctx, domain.NewID(domain.PrefixAPIKey))
			require.ErrorIs(t, err, domain.ErrNotFound)
			_, _, _, err = s.FindAPIKeyByHash(ctx, "nope")
			require.ErrorIs(t, err, domain.ErrNotFound)
			require.ErrorIs(t, s.RevokeAPIKey(ctx, "key_missing", now()), domain.ErrNotFound)
		})
		t.Run("DuplicateHash", func(t *testing.T) {
			dup := *bare
			dup.ID = domain.NewID(domain.PrefixAPIKey)
			require.ErrorIs(t, s.CreateAPIKey(ctx, &dup), domain.ErrDuplicate)
		})
		t.Run("List", func(t *testing.T) {
			keys, err := s.FindAPIKeys(ctx, domain.APIKeyFilter{OrganizationID: tn.org.ID})
			require.NoError(t, err)
			require.Equal(t, []string{bare.ID, full.ID}, ids(keys, keyID), "newest first, only this organization's")
			keys, err = s.FindAPIKeys(ctx, domain.APIKeyFilter{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID})
			require.NoError(t, err)
			require.Equal(t, []string{full.ID}, ids(keys, keyID))
			keys, err = s.FindAPIKeys(ctx, domain.APIKeyFilter{OrganizationID: tn.org.ID, ProjectID: tn.oprj.ID})
			require.NoError(t, err)
			require.Empty(t, keys, "another organization's project")
			require.NotNil(t, keys)
			_, err = s.FindAPIKeys(ctx, domain.APIKeyFilter{})
			require.Error(t, err, "a list without an organization is refused")
		})
		t.Run("RevokeOnce", func(t *testing.T) {
			first := now()
			require.NoError(t, s.RevokeAPIKey(ctx, bare.ID, first))
			require.NoError(t, s.RevokeAPIKey(ctx, bare.ID, first.Add(time.Hour)))
			got, err := s.FindAPIKeyByID(ctx, bare.ID)
			require.NoError(t, err)
			require.Equal(t, first, *got.RevokedAt, "the first revocation stands")
		})
	})
}
