{#- The summary (metric, k, value, n_users) of the per-user model named in vars (default
    rankwise_per_user, the model you write with rankwise.per_user); off without a `rankwise` var. -#}
{{ config(materialized='table', enabled=var('rankwise', none) is not none and var('rankwise', {}).get('summary', true)) }}
{{ rankwise.summary(ref(project_name, var('rankwise', {}).get('per_user_model', 'rankwise_per_user'))) }}
